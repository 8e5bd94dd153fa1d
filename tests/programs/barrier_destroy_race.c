/* Two threads meet at a barrier; main destroys it right after leaving it,
 * while the other thread may still be inside pthread_barrier_wait. The wait
 * reads the barrier object on its way out, after the point where the two
 * threads synchronized; the destroy writes it: unordered, a race in every
 * schedule. (glibc's destroy waits for the other thread to leave, so the
 * program itself is fine.) */
#include <pthread.h>
#include <stdio.h>

static pthread_barrier_t b;
static int done;

static void *waiter(void *arg) {
    pthread_barrier_wait(&b); // RACE
    return arg;
}

int main(void) {
    pthread_barrier_init(&b, NULL, 2);
    pthread_t t;
    pthread_create(&t, NULL, waiter, NULL);
    pthread_barrier_wait(&b);
    pthread_barrier_destroy(&b); // RACE
    done = 1;
    pthread_join(t, NULL);
    printf("%d\n", done);
    return 0;
}
