/* Twin of barrier_destroy_race.c: main joins the other thread before
 * destroying the barrier. */
#include <pthread.h>
#include <stdio.h>

static pthread_barrier_t b;
static int done;

static void *waiter(void *arg) {
    pthread_barrier_wait(&b);
    return arg;
}

int main(void) {
    pthread_barrier_init(&b, NULL, 2);
    pthread_t t;
    pthread_create(&t, NULL, waiter, NULL);
    pthread_barrier_wait(&b);
    pthread_join(t, NULL);
    pthread_barrier_destroy(&b);
    done = 1;
    printf("%d\n", done);
    return 0;
}
