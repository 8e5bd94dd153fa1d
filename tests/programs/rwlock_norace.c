/* pthread_rwlock: two readers hold the read lock concurrently and only read
 * (reads never race with reads); a writer takes the write lock to update.
 * No race. */
#include <pthread.h>
#include <stdio.h>

static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static long config = 1;
static long sums[2];

static void *reader(void *arg) {
    long r = (long)arg;
    for (int i = 0; i < 50; i++) {
        pthread_rwlock_rdlock(&rw);
        sums[r] += config;
        pthread_rwlock_unlock(&rw);
    }
    return NULL;
}

static void *writer(void *arg) {
    for (int i = 0; i < 50; i++) {
        pthread_rwlock_wrlock(&rw);
        config++;
        pthread_rwlock_unlock(&rw);
    }
    return arg;
}

int main(void) {
    pthread_t r0, r1, w;
    pthread_create(&r0, NULL, reader, (void *)0);
    pthread_create(&r1, NULL, reader, (void *)1);
    pthread_create(&w, NULL, writer, NULL);
    pthread_join(r0, NULL);
    pthread_join(r1, NULL);
    pthread_join(w, NULL);
    printf("%ld %ld %ld\n", sums[0], sums[1], config);
    return 0;
}
