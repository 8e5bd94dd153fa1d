/* C thread-local storage (_Thread_local and gcc's __thread): every thread
 * has its own copy, so concurrent updates touch different memory: no race. */
#include <pthread.h>
#include <stdio.h>

static _Thread_local long counter;
static __thread char tag[16];
static long results[4];

static void *work(void *arg) {
    long i = (long)arg;
    for (int k = 0; k < 1000; k++) counter += i;
    tag[0] = (char)('a' + i);
    results[i] = counter + tag[0];
    return NULL;
}

int main(void) {
    pthread_t t[4];
    for (long i = 0; i < 4; i++) pthread_create(&t[i], NULL, work, (void *)i);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    printf("%ld %ld %ld %ld\n", results[0], results[1], results[2], results[3]);
    return 0;
}
