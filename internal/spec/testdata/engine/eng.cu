// An engine's kernel in its own tree (a test fixture: never compiled).
#include "eng.cuh"
#include <cuda_fp16.h>
