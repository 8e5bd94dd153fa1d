/* Three races in three places, for suppressions: `bump_counter` (two
 * workers), `set_flag` (two workers) and `fill_buf` against the memset
 * the library supp_lib.c makes for `clearer`. */
#include <pthread.h>
#include <stdio.h>

void lib_clear(int *p, unsigned long n);

int counter;
int flag;
int buf[4];

__attribute__((noinline)) void bump_counter(void) {
    counter++; /* RACE */
}

__attribute__((noinline)) void set_flag(int v) {
    flag = v; /* RACE */
}

__attribute__((noinline)) void fill_buf(void) {
    buf[0] = 1; /* RACE */
}

static void *worker(void *arg) {
    bump_counter();
    set_flag((int)(long)arg);
    return 0;
}

static void *clearer(void *arg) {
    lib_clear(buf, 4);
    return arg;
}

int main(void) {
    pthread_t a, b, c;
    pthread_create(&a, 0, worker, (void *)1);
    pthread_create(&b, 0, worker, (void *)2);
    pthread_create(&c, 0, clearer, 0);
    fill_buf();
    pthread_join(a, 0);
    pthread_join(b, 0);
    pthread_join(c, 0);
    printf("%d %d %d\n", counter, flag, buf[0]);
    return 0;
}
