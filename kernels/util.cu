// util.cu: measurement helpers (streaming read, stream blocker, clock probe).
