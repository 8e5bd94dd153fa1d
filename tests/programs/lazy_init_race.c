/* Hand-made lazy initialization: two threads call get(), which tests and sets
 * a plain pointer with no lock. The test in one thread and the set in the
 * other are unordered (and the object may be made twice): a race. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static int *instance;

static int *make(void) {
    int *p = malloc(sizeof *p);
    *p = 42;
    return p;
}

static int *get(void) {
    if (instance == NULL) // RACE
        instance = make(); // RACE
    return instance; // RACE
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
    printf("%s\n", ra == rb ? "same" : "initialized twice");
    return 0;
}
