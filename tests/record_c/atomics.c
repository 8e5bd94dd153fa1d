/* Atomic counters and a release/acquire flag publishing plain data. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

atomic_long hits;
atomic_int ready;
_Atomic int spin;
int data;

void *bump(void *arg) {
    for (int i = 0; i < 100; i++) atomic_fetch_add(&hits, 1);
    int expected = 0;
    while (!atomic_compare_exchange_weak(&spin, &expected, 1)) expected = 0;
    atomic_store(&spin, 0);
    return arg;
}

void *publish(void *arg) {
    data = 42;
    atomic_store_explicit(&ready, 1, memory_order_release);
    return arg;
}

void *consume(void *arg) {
    while (!atomic_load_explicit(&ready, memory_order_acquire)) {
    }
    return (void *)(long)data;
}

int main(void) {
    pthread_t t[4];
    pthread_create(&t[0], 0, bump, 0);
    pthread_create(&t[1], 0, bump, 0);
    pthread_create(&t[2], 0, publish, 0);
    pthread_create(&t[3], 0, consume, 0);
    for (int i = 0; i < 4; i++) pthread_join(t[i], 0);
    printf("%ld\n", atomic_load(&hits));
    return atomic_load(&hits) == 200 ? 0 : 1;
}
