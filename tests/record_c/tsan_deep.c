/* A race twelve calls deep, through an always-inlined helper: the report's
 * stack shows f12 ... f1 in order and the inlined helper as a frame. */
#include <pthread.h>
#include <stdio.h>

int depth_total;

static inline __attribute__((always_inline)) void bump(int v) {
    depth_total += v; /* RACE-INLINED */
}

#define STEP(name, next) \
    __attribute__((noinline)) void name(int v) { next(v + 1); __asm__ volatile(""); }

__attribute__((noinline)) void f12(int v) { bump(v); __asm__ volatile(""); }
STEP(f11, f12)
STEP(f10, f11)
STEP(f9, f10)
STEP(f8, f9)
STEP(f7, f8)
STEP(f6, f7)
STEP(f5, f6)
STEP(f4, f5)
STEP(f3, f4)
STEP(f2, f3)
STEP(f1, f2)

static void *worker(void *arg) {
    f1(1);
    return arg;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, 0, worker, 0);
    f1(2);
    pthread_join(t, 0);
    printf("%d\n", depth_total);
    return 0;
}
