/* The C11 <threads.h> API: thrd_create/thrd_join, mtx_t with mtx_lock/
 * mtx_unlock, cnd_t with cnd_wait/cnd_signal, call_once. Every shared access
 * is protected or ordered: no race. gcc 12's ThreadSanitizer does not
 * intercept thrd_create (glibc's implementation calls pthread_create
 * internally), so the new thread runs without TSan's thread state and the
 * program dies with a SEGV report inside TSan. */
#include <stdio.h>
#include <threads.h>

static mtx_t m;
static cnd_t c;
static once_flag once = ONCE_FLAG_INIT;
static int ready, value, inits;

static void init(void) {
    inits++;
}

static int producer(void *arg) {
    call_once(&once, init);
    mtx_lock(&m);
    value = 42;
    ready = 1;
    cnd_signal(&c);
    mtx_unlock(&m);
    return 0;
}

int main(void) {
    mtx_init(&m, mtx_plain);
    cnd_init(&c);
    thrd_t t;
    thrd_create(&t, producer, NULL);
    call_once(&once, init);
    mtx_lock(&m);
    while (!ready) cnd_wait(&c, &m);
    int v = value;
    mtx_unlock(&m);
    thrd_join(t, NULL);
    printf("%d %d\n", v, inits);
    mtx_destroy(&m);
    cnd_destroy(&c);
    return 0;
}
