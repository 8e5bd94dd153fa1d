/* Mutex lock/trylock/timedlock, a recursive mutex, a spin lock, an rwlock
 * (readers in parallel, one writer) and pthread_once: race-free. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t rec;
pthread_spinlock_t spin;
pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
pthread_once_t once = PTHREAD_ONCE_INIT;
long a, b, c, d, shared, config;

static void init_config(void) { config = 7; }

void *work(void *arg) {
    pthread_once(&once, init_config);
    long seen = config;
    for (int i = 0; i < 50; i++) {
        while (pthread_mutex_trylock(&m) == EBUSY) {
        }
        a++;
        pthread_mutex_unlock(&m);

        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 5;
        if (pthread_mutex_timedlock(&m, &ts) == 0) {
            b++;
            pthread_mutex_unlock(&m);
        }

        pthread_mutex_lock(&rec);
        pthread_mutex_lock(&rec);
        c++;
        pthread_mutex_unlock(&rec);
        pthread_mutex_unlock(&rec);

        pthread_spin_lock(&spin);
        d++;
        pthread_spin_unlock(&spin);

        if (i % 10 == 0) {
            pthread_rwlock_wrlock(&rw);
            shared += seen;
            pthread_rwlock_unlock(&rw);
        } else {
            pthread_rwlock_rdlock(&rw);
            seen += shared;
            pthread_rwlock_unlock(&rw);
        }
    }
    return (void *)seen;
}

int main(void) {
    pthread_mutexattr_t at;
    pthread_mutexattr_init(&at);
    pthread_mutexattr_settype(&at, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&rec, &at);
    pthread_spin_init(&spin, 0);
    pthread_t t[3];
    for (int i = 0; i < 3; i++) pthread_create(&t[i], 0, work, 0);
    for (int i = 0; i < 3; i++) pthread_join(t[i], 0);
    printf("%ld %ld %ld %ld %ld\n", a, b, c, d, shared);
    return a == 150 && b == 150 && c == 150 && d == 150 ? 0 : 1;
}
