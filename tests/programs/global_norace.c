/* Two threads update a global counter, both under the same mutex: the
 * critical sections are ordered by the lock, no race. */
#include <pthread.h>
#include <stdio.h>

static long counter;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

static void *locked_add(void *arg) {
    pthread_mutex_lock(&m);
    counter += 1;
    pthread_mutex_unlock(&m);
    return arg;
}

static void *unlocked_add(void *arg) {
    pthread_mutex_lock(&m);
    counter += 2;
    pthread_mutex_unlock(&m);
    return arg;
}

int main(void) {
    pthread_t a, b;
    pthread_create(&a, NULL, locked_add, NULL);
    pthread_create(&b, NULL, unlocked_add, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("%ld\n", counter);
    return 0;
}
