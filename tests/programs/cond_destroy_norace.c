/* Twin of cond_destroy_race.c: main joins the signalling thread before
 * destroying the condition variable. */
#include <pthread.h>
#include <stdio.h>

static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static int ready;

static void *signaller(void *arg) {
    pthread_mutex_lock(&m);
    ready = 1;
    pthread_mutex_unlock(&m);
    pthread_cond_signal(&c);
    return arg;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, signaller, NULL);
    pthread_join(t, NULL);
    pthread_cond_destroy(&c);
    printf("%d\n", ready);
    return 0;
}
