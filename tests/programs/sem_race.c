/* Twin of sem_norace.c where main posts before updating: its update is then
 * unordered with the other thread's update that follows the sem_wait. */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>

static sem_t ping, pong;
static long value;

static void *player(void *arg) {
    sem_wait(&ping);
    value += 2; // RACE
    sem_post(&pong);
    return arg;
}

int main(void) {
    sem_init(&ping, 0, 0);
    sem_init(&pong, 0, 0);
    pthread_t t;
    pthread_create(&t, NULL, player, NULL);
    sem_post(&ping);
    value += 1; // RACE
    sem_wait(&pong);
    pthread_join(t, NULL);
    sem_destroy(&ping);
    sem_destroy(&pong);
    printf("%ld\n", value);
    return 0;
}
