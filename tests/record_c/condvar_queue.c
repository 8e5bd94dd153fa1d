/* A bounded queue under a mutex with condition variables: race-free. */
#include <pthread.h>
#include <stdio.h>

#define N 4
#define ITEMS 200
int buf[N], head, tail, size;
pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER, not_full = PTHREAD_COND_INITIALIZER;
long sum;

void *producer(void *arg) {
    for (int i = 1; i <= ITEMS; i++) {
        pthread_mutex_lock(&m);
        while (size == N) pthread_cond_wait(&not_full, &m);
        buf[tail] = i;
        tail = (tail + 1) % N;
        size++;
        pthread_cond_signal(&not_empty);
        pthread_mutex_unlock(&m);
    }
    return arg;
}

void *consumer(void *arg) {
    for (int i = 0; i < ITEMS; i++) {
        pthread_mutex_lock(&m);
        while (size == 0) pthread_cond_wait(&not_empty, &m);
        sum += buf[head];
        head = (head + 1) % N;
        size--;
        pthread_cond_signal(&not_full);
        pthread_mutex_unlock(&m);
    }
    return arg;
}

int main(void) {
    pthread_t p, c;
    pthread_create(&p, 0, producer, 0);
    pthread_create(&c, 0, consumer, 0);
    pthread_join(p, 0);
    pthread_join(c, 0);
    printf("%ld\n", sum);
    return sum == ITEMS * (ITEMS + 1) / 2 ? 0 : 1;
}
