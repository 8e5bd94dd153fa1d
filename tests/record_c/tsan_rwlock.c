/* The thread reads under the read side of an rwlock, main writes holding
 * nothing: a race whose reader holds "read M0". */
#include <pthread.h>
#include <stdio.h>

int table;
pthread_rwlock_t guard = PTHREAD_RWLOCK_INITIALIZER;

static void *reader(void *arg) {
    pthread_rwlock_rdlock(&guard); /* LOCK-READ */
    int seen = table;              /* RACE */
    pthread_rwlock_unlock(&guard);
    *(int *)arg = seen;
    return arg;
}

int main(void) {
    pthread_t t;
    int seen = 0;
    pthread_create(&t, 0, reader, &seen);
    table = 7; /* RACE */
    pthread_join(t, 0);
    printf("%d\n", seen);
    return 0;
}
