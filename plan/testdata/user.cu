// user.cu: a user kernel for the planner tests; the planner only reads and
// hashes its text.
#include "abi.cuh"
