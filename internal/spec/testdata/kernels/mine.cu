// mine.cu: a user kernel for the spec tests; only its existence matters.
#include "abi.cuh"
