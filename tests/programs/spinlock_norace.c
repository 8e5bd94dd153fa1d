/* pthread_spinlock_t protecting a counter updated by two threads: no race. */
#include <pthread.h>
#include <stdio.h>

static pthread_spinlock_t lock;
static long counter;

static void *work(void *arg) {
    for (int i = 0; i < 100; i++) {
        pthread_spin_lock(&lock);
        counter++;
        pthread_spin_unlock(&lock);
    }
    return arg;
}

int main(void) {
    pthread_spin_init(&lock, PTHREAD_PROCESS_PRIVATE);
    pthread_t a, b;
    pthread_create(&a, NULL, work, NULL);
    pthread_create(&b, NULL, work, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    pthread_spin_destroy(&lock);
    printf("%ld\n", counter);
    return 0;
}
