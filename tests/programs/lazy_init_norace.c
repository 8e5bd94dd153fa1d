/* Twin of lazy_init_race.c: the lazy initialization goes through
 * pthread_once, which orders the initializer before every return from
 * pthread_once: no race. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static int *instance;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void make(void) {
    int *p = malloc(sizeof *p);
    *p = 42;
    instance = p;
}

static int *get(void) {
    pthread_once(&once, make);
    return instance;
}

static void *user(void *arg) {
    return get();
}

int main(void) {
    pthread_t a, b;
    void *ra, *rb;
    pthread_create(&a, NULL, user, NULL);
    pthread_create(&b, NULL, user, NULL);
    pthread_join(a, &ra);
    pthread_join(b, &rb);
    printf("%s %d\n", ra == rb ? "same" : "initialized twice", *(int *)ra);
    return 0;
}
