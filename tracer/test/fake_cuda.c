/* Fake libcuda.so.1 for the g2gtrace tests (no GPU needed): cuPointerGetAttribute(s) report
 * "device" / "managed" / page-locked host memory for ranges registered with g2gfake_set_device /
 * g2gfake_set_managed / g2gfake_set_pinned and "not a CUDA pointer" for everything else.  Point
 * G2G_LIBCUDA at the built library. */
#include <stddef.h>
#include <stdint.h>

static struct {
    uintptr_t lo, hi;
    int managed; /* 0 device, 1 managed, 2 pinned host */
} ranges[64];
static int n_ranges;

static void add(const void *p, size_t n, int managed)
{
    if (n_ranges < 64) {
        ranges[n_ranges].lo = (uintptr_t)p;
        ranges[n_ranges].hi = (uintptr_t)p + n;
        ranges[n_ranges].managed = managed;
        n_ranges++;
    }
}
void g2gfake_set_device(const void *p, size_t n) { add(p, n, 0); }
void g2gfake_set_managed(const void *p, size_t n) { add(p, n, 1); }
void g2gfake_set_pinned(const void *p, size_t n) { add(p, n, 2); }

/* CU_MEMORYTYPE_HOST = 1 for page-locked host memory, CU_MEMORYTYPE_DEVICE = 2 otherwise */
static unsigned memtype(int i) { return ranges[i].managed == 2 ? 1u : 2u; }
static unsigned is_managed(int i) { return ranges[i].managed == 1; }

static int find(unsigned long long p)
{
    for (int i = 0; i < n_ranges; i++)
        if (p >= ranges[i].lo && p < ranges[i].hi) return i;
    return -1;
}

/* CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2 (CU_MEMORYTYPE_DEVICE = 2), IS_MANAGED = 8 */
int cuPointerGetAttributes(unsigned int n, int *attrs, void **data, unsigned long long ptr)
{
    int i = find(ptr);
    for (unsigned int k = 0; k < n; k++) {
        if (attrs[k] == 2) *(unsigned int *)data[k] = i < 0 ? 0u : memtype(i);
        else if (attrs[k] == 8) *(unsigned int *)data[k] = i < 0 ? 0u : is_managed(i);
    }
    return 0;
}

int cuPointerGetAttribute(void *data, int attr, unsigned long long ptr)
{
    int i = find(ptr);
    if (i < 0) return 1; /* CUDA_ERROR_INVALID_VALUE */
    if (attr == 2) *(unsigned int *)data = memtype(i);
    else if (attr == 8) *(unsigned int *)data = is_managed(i);
    return 0;
}
