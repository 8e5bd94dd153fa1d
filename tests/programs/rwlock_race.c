/* Twin of rwlock_norace.c: one "reader" writes the shared value while holding
 * only the read lock. Read-lock holders do not exclude each other, so its
 * write races with the other reader's read. */
#include <pthread.h>
#include <stdio.h>

static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static long config = 1;
static long sums[2];

static void *reader(void *arg) {
    for (int i = 0; i < 50; i++) {
        pthread_rwlock_rdlock(&rw);
        sums[0] += config; // RACE
        pthread_rwlock_unlock(&rw);
    }
    return arg;
}

static void *bad_reader(void *arg) {
    for (int i = 0; i < 50; i++) {
        pthread_rwlock_rdlock(&rw);
        config++; // RACE
        sums[1] += 1;
        pthread_rwlock_unlock(&rw);
    }
    return arg;
}

int main(void) {
    pthread_t r0, r1;
    pthread_create(&r0, NULL, reader, NULL);
    pthread_create(&r1, NULL, bad_reader, NULL);
    pthread_join(r0, NULL);
    pthread_join(r1, NULL);
    printf("%ld %ld %ld\n", sums[0], sums[1], config);
    return 0;
}
