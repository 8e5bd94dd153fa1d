/* A ping-pong through two POSIX semaphores: each thread updates the shared
 * value only after sem_wait on the semaphore the other one posts after its
 * own update: every update is ordered, no race. */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>

static sem_t ping, pong;
static long value;

static void *player(void *arg) {
    for (int i = 0; i < 20; i++) {
        sem_wait(&ping);
        value += 2;
        sem_post(&pong);
    }
    return arg;
}

int main(void) {
    sem_init(&ping, 0, 0);
    sem_init(&pong, 0, 0);
    pthread_t t;
    pthread_create(&t, NULL, player, NULL);
    for (int i = 0; i < 20; i++) {
        value += 1;
        sem_post(&ping);
        sem_wait(&pong);
    }
    pthread_join(t, NULL);
    sem_destroy(&ping);
    sem_destroy(&pong);
    printf("%ld\n", value);
    return 0;
}
