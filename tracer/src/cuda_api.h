/*
 * The few CUDA driver and CUPTI declarations g2gtrace needs, declared here so that the tracer
 * builds without a CUDA toolkit.  Everything is reached through dlopen/dlsym at run time.
 *
 * Values are those of the public CUDA headers (cuda.h, cupti_activity.h), which keep them stable
 * across releases.  CUPTI memcpy activity records are read only through their first fields, which
 * are laid out identically in CUpti_ActivityMemcpy .. CUpti_ActivityMemcpy6.
 */
#ifndef G2G_CUDA_API_H
#define G2G_CUDA_API_H

#include <stddef.h>
#include <stdint.h>

/* ---- driver API (libcuda.so.1) ---- */
typedef int g2g_CUresult;
typedef unsigned long long g2g_CUdeviceptr;
typedef void *g2g_CUcontext;

#define G2G_CUDA_SUCCESS 0
#define G2G_CUDA_ERROR_INVALID_VALUE 1
#define G2G_CUDA_ERROR_NOT_INITIALIZED 3

#define G2G_CU_POINTER_ATTRIBUTE_MEMORY_TYPE 2
#define G2G_CU_POINTER_ATTRIBUTE_IS_MANAGED 8

#define G2G_CU_MEMORYTYPE_HOST 1
#define G2G_CU_MEMORYTYPE_DEVICE 2
#define G2G_CU_MEMORYTYPE_ARRAY 3
#define G2G_CU_MEMORYTYPE_UNIFIED 4

typedef g2g_CUresult (*g2g_cuPointerGetAttribute_t)(void *data, int attribute, g2g_CUdeviceptr ptr);
typedef g2g_CUresult (*g2g_cuPointerGetAttributes_t)(unsigned int n, int *attributes, void **data,
                                                     g2g_CUdeviceptr ptr);

/* ---- CUPTI activity API (libcupti.so) ---- */
typedef int g2g_CUptiResult;
#define G2G_CUPTI_SUCCESS 0

#define G2G_CUPTI_ACTIVITY_KIND_MEMCPY 1
#define G2G_CUPTI_ACTIVITY_FLAG_FLUSH_FORCED 1
#define G2G_CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC 1

/* CUpti_ActivityMemcpyKind */
#define G2G_CUPTI_MEMCPY_UNKNOWN 0
#define G2G_CUPTI_MEMCPY_HTOD 1
#define G2G_CUPTI_MEMCPY_DTOH 2
#define G2G_CUPTI_MEMCPY_HTOA 3
#define G2G_CUPTI_MEMCPY_ATOH 4
#define G2G_CUPTI_MEMCPY_ATOA 5
#define G2G_CUPTI_MEMCPY_ATOD 6
#define G2G_CUPTI_MEMCPY_DTOA 7
#define G2G_CUPTI_MEMCPY_DTOD 8
#define G2G_CUPTI_MEMCPY_HTOH 9
#define G2G_CUPTI_MEMCPY_PTOP 10

/* Common prefix of every CUpti_ActivityMemcpyN record (PACKED_ALIGNMENT = packed, aligned(8)). */
typedef struct __attribute__((packed, aligned(8))) {
    uint32_t kind;
    uint8_t copyKind;
    uint8_t srcKind;
    uint8_t dstKind;
    uint8_t flags;
    uint64_t bytes;
    uint64_t start;
    uint64_t end;
    uint32_t deviceId;
    uint32_t contextId;
    uint32_t streamId;
    uint32_t correlationId;
} g2g_cupti_memcpy_prefix;

typedef struct {
    uint32_t kind;
} g2g_cupti_activity;

typedef void (*g2g_cupti_buffer_requested_t)(uint8_t **buffer, size_t *size, size_t *max_records);
typedef void (*g2g_cupti_buffer_completed_t)(g2g_CUcontext ctx, uint32_t stream_id, uint8_t *buffer,
                                             size_t size, size_t valid_size);

typedef g2g_CUptiResult (*g2g_cuptiActivityRegisterCallbacks_t)(g2g_cupti_buffer_requested_t,
                                                                g2g_cupti_buffer_completed_t);
typedef g2g_CUptiResult (*g2g_cuptiActivityEnable_t)(int kind);
typedef g2g_CUptiResult (*g2g_cuptiActivityDisable_t)(int kind);
typedef g2g_CUptiResult (*g2g_cuptiActivityFlushAll_t)(uint32_t flag);
typedef g2g_CUptiResult (*g2g_cuptiActivityGetNextRecord_t)(uint8_t *buffer, size_t valid_size,
                                                            g2g_cupti_activity **record);
typedef g2g_CUptiResult (*g2g_cuptiGetTimestamp_t)(uint64_t *timestamp);
/* CUPTI >= 11.x: CUPTI stamps activity records with this clock instead of its own */
typedef uint64_t (*g2g_cupti_timestamp_fn)(void);
typedef g2g_CUptiResult (*g2g_cuptiActivityRegisterTimestampCallback_t)(g2g_cupti_timestamp_fn);

/* ---- CUPTI callback API and kernel activity (GPU streams) ---- */
#define G2G_CUPTI_ACTIVITY_KIND_KERNEL 3
#define G2G_CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL 10
#define G2G_CUPTI_CB_DOMAIN_DRIVER_API 1
#define G2G_CUPTI_CB_DOMAIN_RUNTIME_API 2
#define G2G_CUPTI_API_ENTER 0
#define G2G_CUPTI_API_EXIT 1

/* CUpti_CallbackData (cupti_callbacks.h; natural alignment) */
typedef struct {
    int callbackSite; /* CUpti_ApiCallbackSite */
    const char *functionName;
    const void *functionParams;
    void *functionReturnValue;
    const char *symbolName;
    g2g_CUcontext context;
    uint32_t contextUid;
    uint64_t *correlationData;
    uint32_t correlationId;
} g2g_cupti_cbdata;

/* Common prefix of CUpti_ActivityKernel4 .. CUpti_ActivityKernel10 (packed, aligned(8)) */
typedef struct __attribute__((packed, aligned(8))) {
    uint32_t kind;
    uint8_t cacheConfig;
    uint8_t sharedMemoryConfig;
    uint16_t registersPerThread;
    int32_t partitionedGlobalCacheRequested;
    int32_t partitionedGlobalCacheExecuted;
    uint64_t start;
    uint64_t end;
    uint64_t completed;
    uint32_t deviceId;
    uint32_t contextId;
    uint32_t streamId;
    int32_t gridX, gridY, gridZ, blockX, blockY, blockZ;
    int32_t staticSharedMemory, dynamicSharedMemory;
    uint32_t localMemoryPerThread, localMemoryTotal;
    uint32_t correlationId;
    int64_t gridId;
    const char *name;
} g2g_cupti_kernel_prefix;

/* First fields of the API parameter structs (generated_cuda_runtime_api_meta.h,
 * generated_cuda_meta.h); the driver's have the same layout for these calls. */
typedef struct { void *stream; } g2g_p_stream;                       /* cudaStreamSynchronize */
typedef struct { void *event; } g2g_p_event;                         /* cudaEventSynchronize */
typedef struct { void *event; void *stream; } g2g_p_event_stream;    /* cudaEventRecord(WithFlags) */
typedef struct { void *stream; void *event; } g2g_p_stream_event;    /* cudaStreamWaitEvent */
typedef struct { void **pStream; unsigned int flags; int priority; } g2g_p_stream_create; /* ...WithPriority */

typedef void (*g2g_cupti_callback_fn)(void *userdata, int domain, uint32_t cbid, const void *cbdata);
typedef g2g_CUptiResult (*g2g_cuptiSubscribe_t)(void **subscriber, g2g_cupti_callback_fn cb, void *userdata);
typedef g2g_CUptiResult (*g2g_cuptiUnsubscribe_t)(void *subscriber);
typedef g2g_CUptiResult (*g2g_cuptiEnableCallback_t)(uint32_t enable, void *subscriber, int domain, uint32_t cbid);
typedef g2g_CUptiResult (*g2g_cuptiEnableDomain_t)(uint32_t enable, void *subscriber, int domain);
typedef g2g_CUptiResult (*g2g_cuptiGetCallbackName_t)(int domain, uint32_t cbid, const char **name);
typedef g2g_CUptiResult (*g2g_cuptiGetStreamId_t)(g2g_CUcontext ctx, void *stream, uint32_t *id);
typedef g2g_CUptiResult (*g2g_cuptiGetStreamIdEx_t)(g2g_CUcontext ctx, void *stream, uint8_t per_thread, uint32_t *id);
typedef g2g_CUresult (*g2g_cuStreamGetPriority_t)(void *stream, int *priority);

#endif
