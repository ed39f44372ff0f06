// Minimal CUDA driver probe through dlopen: nothing CUDA is linked at build
// time, so the binary builds and runs on machines without CUDA.
#ifndef FD_CUDA_PROBE_H
#define FD_CUDA_PROBE_H
#include <stddef.h>

#define FD_CUDA_MAX_DEVICES 16

typedef struct {
	char name[256];
	size_t total_mem;
	int cc_major, cc_minor;
	int pci_bus;
} fd_cuda_device;

typedef struct {
	int status;            // 0 ok; 1 no library; 2 missing symbol; 3 driver call failed
	int cu_result;         // CUresult of the failed call
	char error[512];       // dlerror() or the failed call and cuGetErrorString
	int driver_version;    // e.g. 12040
	int count;             // devices the driver reports
	fd_cuda_device devices[FD_CUDA_MAX_DEVICES];
} fd_cuda_probe_result;

void fd_cuda_probe(const char *lib, fd_cuda_probe_result *out);

// fd_can_load opens lib the way a library that needs it would (the dynamic
// loader's search: LD_LIBRARY_PATH, ldconfig's cache) and closes it again.
// It returns 0 when lib loads, else 1 with dlerror() in err.
int fd_can_load(const char *lib, char *err, size_t errlen);

#endif
