/* Semaphore hand-off: the producer fills a slot, posts; the consumer waits,
 * reads it, posts back. Race-free. */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>

int slot;
long sum;
sem_t full, empty;

void *producer(void *arg) {
    for (int i = 1; i <= 100; i++) {
        sem_wait(&empty);
        slot = i;
        sem_post(&full);
    }
    return arg;
}

void *consumer(void *arg) {
    for (int i = 0; i < 100; i++) {
        sem_wait(&full);
        sum += slot;
        sem_post(&empty);
    }
    return arg;
}

int main(void) {
    pthread_t p, c;
    sem_init(&full, 0, 0);
    sem_init(&empty, 0, 1);
    pthread_create(&p, 0, producer, 0);
    pthread_create(&c, 0, consumer, 0);
    pthread_join(p, 0);
    pthread_join(c, 0);
    printf("%ld\n", sum);
    return sum == 5050 ? 0 : 1;
}
