/* Drives zstd's multithreaded compressor from several threads: each harness
 * thread compresses its own buffer with nbWorkers zstd worker threads (zstd's
 * own pool, mutexes and condition variables), then decompresses and checks
 * the result. Usage: harness THREADS KIB_PER_THREAD WORKERS LEVEL */
#define ZSTD_STATIC_LINKING_ONLY
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "zstd.h"

static size_t kib;
static int workers, level;

static void fill(unsigned char *p, size_t n, unsigned seed) {
    static const char *words[] = {"race", "lock", "thread", "predict", "window",
                                  "causally", "precedes", "happens", "before", "trace"};
    size_t i = 0;
    while (i < n) {
        seed = seed * 1103515245u + 12345u;
        const char *w = words[(seed >> 16) % 10];
        for (size_t k = 0; w[k] && i < n; k++) p[i++] = (unsigned char)w[k];
        if (i < n) p[i++] = (seed >> 8) % 7 ? ' ' : '\n';
    }
}

static void *job(void *arg) {
    unsigned seed = (unsigned)(size_t)arg;
    size_t n = kib * 1024;
    unsigned char *src = malloc(n), *back = malloc(n);
    size_t cap = ZSTD_compressBound(n);
    unsigned char *dst = malloc(cap);
    fill(src, n, seed);
    ZSTD_CCtx *c = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level);
    ZSTD_CCtx_setParameter(c, ZSTD_c_nbWorkers, workers);
    ZSTD_CCtx_setParameter(c, ZSTD_c_jobSize, 512 * 1024);
    size_t z = ZSTD_compress2(c, dst, cap, src, n);
    ZSTD_freeCCtx(c);
    if (ZSTD_isError(z)) {
        fprintf(stderr, "compress: %s\n", ZSTD_getErrorName(z));
        exit(1);
    }
    size_t m = ZSTD_decompress(back, n, dst, z);
    if (ZSTD_isError(m) || m != n || memcmp(src, back, n)) {
        fprintf(stderr, "round trip failed\n");
        exit(1);
    }
    free(src);
    free(back);
    free(dst);
    return (void *)z;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 2;
    kib = argc > 2 ? (size_t)atol(argv[2]) : 1024;
    workers = argc > 3 ? atoi(argv[3]) : 2;
    level = argc > 4 ? atoi(argv[4]) : 1;
    pthread_t t[64];
    size_t total = 0;
    for (int i = 0; i < threads && i < 64; i++) pthread_create(&t[i], 0, job, (void *)(size_t)(i + 1));
    for (int i = 0; i < threads && i < 64; i++) {
        void *z;
        pthread_join(t[i], &z);
        total += (size_t)z;
    }
    printf("%d threads x %zu KiB -> %zu bytes compressed\n", threads, kib, total);
    return 0;
}
