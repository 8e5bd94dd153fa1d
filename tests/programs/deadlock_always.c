/* HANGS. The inversion of deadlock_inversion.c made certain: each thread
 * takes its first lock, then both meet at a barrier, then each asks for the
 * lock the other holds. The program never ends (run it with a timeout). No
 * data race. TSan checks lock order when a lock is acquired, and here neither
 * second acquisition ever completes, so TSan reports nothing before the
 * timeout kills the program. */
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t A = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t B = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t both_hold_one;

static void *ab(void *arg) {
    pthread_mutex_lock(&A); // DEADLOCK
    pthread_barrier_wait(&both_hold_one);
    pthread_mutex_lock(&B); // DEADLOCK
    pthread_mutex_unlock(&B);
    pthread_mutex_unlock(&A);
    return arg;
}

static void *ba(void *arg) {
    pthread_mutex_lock(&B); // DEADLOCK
    pthread_barrier_wait(&both_hold_one);
    pthread_mutex_lock(&A); // DEADLOCK
    pthread_mutex_unlock(&A);
    pthread_mutex_unlock(&B);
    return arg;
}

int main(void) {
    pthread_barrier_init(&both_hold_one, NULL, 2);
    pthread_t t1, t2;
    pthread_create(&t1, NULL, ab, NULL);
    pthread_create(&t2, NULL, ba, NULL);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    puts("not reached");
    return 0;
}
