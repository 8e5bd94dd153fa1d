// Every kind of synchronization the runtime records, from threads that
// block, sleep outside any intercepted call, start and end while others
// run: what `record --analyze` merges while the program runs. One race on
// purpose (`stats`), the rest is synchronized.
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define WORKERS 6
#define ROUNDS 40

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ready = PTHREAD_COND_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_barrier_t phase;
static sem_t tokens;
static long queue[ROUNDS * WORKERS];
static int queued, taken;
static long shared_sum;
static long table[64];
static atomic_long hits;
static long stats; // racy

static void *child(void *arg) {
    long *slot = arg;
    pthread_mutex_lock(&m);
    *slot += 1;
    pthread_mutex_unlock(&m);
    return NULL;
}

static void *producer(void *arg) {
    long id = (long)arg;
    for (int i = 0; i < ROUNDS; i++) {
        pthread_mutex_lock(&m);
        queue[queued++] = id * 1000 + i;
        pthread_cond_signal(&ready);
        pthread_mutex_unlock(&m);
        if (i % 8 == 0)
            usleep(200);
        sem_post(&tokens);
        atomic_fetch_add(&hits, 1);
    }
    return NULL;
}

static void *consumer(void *arg) {
    long id = (long)arg;
    for (int i = 0; i < ROUNDS; i++) {
        sem_wait(&tokens);
        pthread_mutex_lock(&m);
        while (taken == queued)
            pthread_cond_wait(&ready, &m);
        shared_sum += queue[taken++];
        pthread_mutex_unlock(&m);
        pthread_rwlock_rdlock(&rw);
        long v = table[i % 64];
        pthread_rwlock_unlock(&rw);
        pthread_rwlock_wrlock(&rw);
        table[(i + id) % 64] = v + 1;
        pthread_rwlock_unlock(&rw);
        if (i % 10 == 0) {
            pthread_t t;
            long slot = 0;
            pthread_create(&t, NULL, child, &slot);
            pthread_join(t, NULL);
            pthread_mutex_lock(&m);
            shared_sum += slot;
            pthread_mutex_unlock(&m);
        }
        if (i % 13 == 0)
            usleep(300);
    }
    stats += id;
    pthread_barrier_wait(&phase);
    pthread_mutex_lock(&m);
    shared_sum += table[id];
    pthread_mutex_unlock(&m);
    return NULL;
}

int main(void) {
    pthread_t p[WORKERS / 2], c[WORKERS / 2];
    sem_init(&tokens, 0, 0);
    pthread_barrier_init(&phase, NULL, WORKERS / 2);
    for (long i = 0; i < WORKERS / 2; i++) {
        pthread_create(&p[i], NULL, producer, (void *)i);
        pthread_create(&c[i], NULL, consumer, (void *)i);
    }
    for (int i = 0; i < WORKERS / 2; i++) {
        pthread_join(p[i], NULL);
        pthread_join(c[i], NULL);
    }
    printf("%ld %ld %ld\n", shared_sum, atomic_load(&hits), stats);
    return 0;
}
