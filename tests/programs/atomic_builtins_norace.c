/* gcc's __atomic builtins on plain variables: a release store / acquire load
 * pair publishes data, and a compare-exchange (acq_rel) hands it back:
 * every plain access is ordered, no race. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>

static int data;
static int flag;

static void *producer(void *arg) {
    data = 1;
    __atomic_store_n(&flag, 1, __ATOMIC_RELEASE);
    int expected = 2;
    while (!__atomic_compare_exchange_n(&flag, &expected, 3, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        expected = 2;
        sched_yield();
    }
    data += 10;
    return arg;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, producer, NULL);
    while (__atomic_load_n(&flag, __ATOMIC_ACQUIRE) != 1) sched_yield();
    data += 100;
    __atomic_fetch_add(&flag, 1, __ATOMIC_RELEASE); /* 1 -> 2 */
    pthread_join(t, NULL);
    printf("%d\n", data);
    return 0;
}
