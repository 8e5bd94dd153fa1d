/* Two threads update a global counter; one of them takes the mutex, the other
 * does not, so the two read-modify-writes are unordered: a race. */
#include <pthread.h>
#include <stdio.h>

static long counter;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

static void *locked_add(void *arg) {
    pthread_mutex_lock(&m);
    counter += 1; // RACE
    pthread_mutex_unlock(&m);
    return arg;
}

static void *unlocked_add(void *arg) {
    counter += 2; // RACE
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
