// ktune: <assert.h> for device code under NVRTC (README.md). NVRTC
// defines assert itself (it calls __assertfail); defining it again here
// would collide with it, so this header only lets the #include resolve.
#pragma once
