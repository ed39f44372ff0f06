#include "probe.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

typedef int (*fd_cuInit)(unsigned int);
typedef int (*fd_cuDriverGetVersion)(int *);
typedef int (*fd_cuDeviceGetCount)(int *);
typedef int (*fd_cuDeviceGet)(int *, int);
typedef int (*fd_cuDeviceGetName)(char *, int, int);
typedef int (*fd_cuDeviceTotalMem)(size_t *, int);
typedef int (*fd_cuDeviceGetAttribute)(int *, int, int);
typedef int (*fd_cuGetErrorString)(int, const char **);

// CUdevice_attribute values (cuda.h).
#define FD_CU_ATTR_PCI_BUS_ID 33
#define FD_CU_ATTR_CC_MAJOR 75
#define FD_CU_ATTR_CC_MINOR 76

static void fd_fail(fd_cuda_probe_result *out, fd_cuGetErrorString es, const char *call, int rc) {
	const char *msg = NULL;
	out->status = 3;
	out->cu_result = rc;
	if (es == NULL || es(rc, &msg) != 0 || msg == NULL) msg = "unknown error";
	snprintf(out->error, sizeof out->error, "%s: CUDA error %d (%s)", call, rc, msg);
}

void fd_cuda_probe(const char *lib, fd_cuda_probe_result *out) {
	memset(out, 0, sizeof *out);
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		const char *e = dlerror();
		out->status = 1;
		snprintf(out->error, sizeof out->error, "%s", e ? e : "dlopen failed");
		return;
	}
	fd_cuInit init = (fd_cuInit)dlsym(h, "cuInit");
	fd_cuDriverGetVersion ver = (fd_cuDriverGetVersion)dlsym(h, "cuDriverGetVersion");
	fd_cuDeviceGetCount count = (fd_cuDeviceGetCount)dlsym(h, "cuDeviceGetCount");
	fd_cuDeviceGet get = (fd_cuDeviceGet)dlsym(h, "cuDeviceGet");
	fd_cuDeviceGetName name = (fd_cuDeviceGetName)dlsym(h, "cuDeviceGetName");
	fd_cuDeviceTotalMem mem = (fd_cuDeviceTotalMem)dlsym(h, "cuDeviceTotalMem_v2");
	fd_cuDeviceGetAttribute attr = (fd_cuDeviceGetAttribute)dlsym(h, "cuDeviceGetAttribute");
	fd_cuGetErrorString es = (fd_cuGetErrorString)dlsym(h, "cuGetErrorString");
	if (!init || !ver || !count || !get || !name || !mem || !attr) {
		out->status = 2;
		snprintf(out->error, sizeof out->error, "%s lacks the CUDA driver API (cuInit, cuDeviceGetCount, cuDeviceTotalMem_v2, ...)", lib);
		return; // the handle stays open: closing a driver library is not safe
	}
	int rc = init(0);
	if (rc != 0) { fd_fail(out, es, "cuInit", rc); return; }
	if ((rc = ver(&out->driver_version)) != 0) { fd_fail(out, es, "cuDriverGetVersion", rc); return; }
	int n = 0;
	if ((rc = count(&n)) != 0) { fd_fail(out, es, "cuDeviceGetCount", rc); return; }
	out->count = n;
	if (n > FD_CUDA_MAX_DEVICES) n = FD_CUDA_MAX_DEVICES;
	for (int i = 0; i < n; i++) {
		int dev = 0;
		fd_cuda_device *d = &out->devices[i];
		if ((rc = get(&dev, i)) != 0) { fd_fail(out, es, "cuDeviceGet", rc); return; }
		if ((rc = name(d->name, sizeof d->name, dev)) != 0) { fd_fail(out, es, "cuDeviceGetName", rc); return; }
		if ((rc = mem(&d->total_mem, dev)) != 0) { fd_fail(out, es, "cuDeviceTotalMem", rc); return; }
		attr(&d->cc_major, FD_CU_ATTR_CC_MAJOR, dev);
		attr(&d->cc_minor, FD_CU_ATTR_CC_MINOR, dev);
		attr(&d->pci_bus, FD_CU_ATTR_PCI_BUS_ID, dev);
	}
}

int fd_can_load(const char *lib, char *err, size_t errlen) {
	void *h = dlopen(lib, RTLD_LAZY | RTLD_LOCAL);
	if (h == NULL) {
		const char *e = dlerror();
		snprintf(err, errlen, "%s", e ? e : "dlopen failed");
		return 1;
	}
	dlclose(h);
	return 0;
}
