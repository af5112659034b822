// abi.cuh: the kernel ABI every ktune attention kernel follows (ABI.md
// documents it in full). Placeholder: the kernel files define the body.
#pragma once
