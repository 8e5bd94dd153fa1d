/* main destroys a condition variable that a thread signals, without joining
 * the thread first. destroy writes the condvar object, signal reads it:
 * unordered, a race. (glibc's signal on a destroyed condvar is harmless, so
 * the program runs the same in either order.) */
#include <pthread.h>
#include <stdio.h>

static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static int ready;

static void *signaller(void *arg) {
    pthread_mutex_lock(&m);
    ready = 1;
    pthread_mutex_unlock(&m);
    pthread_cond_signal(&c); // RACE
    return arg;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, signaller, NULL);
    pthread_cond_destroy(&c); // RACE
    pthread_join(t, NULL);
    printf("%d\n", ready);
    return 0;
}
