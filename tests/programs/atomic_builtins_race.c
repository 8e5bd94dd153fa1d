/* Twin of atomic_builtins_norace.c with __ATOMIC_RELAXED everywhere: relaxed
 * operations synchronize nothing, so main's update of data and the
 * producer's are unordered: races. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>

static int data;
static int flag;

static void *producer(void *arg) {
    data = 1; // RACE
    __atomic_store_n(&flag, 1, __ATOMIC_RELAXED);
    int expected = 2;
    while (!__atomic_compare_exchange_n(&flag, &expected, 3, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
        expected = 2;
        sched_yield();
    }
    data += 10; // RACE
    return arg;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, producer, NULL);
    while (__atomic_load_n(&flag, __ATOMIC_RELAXED) != 1) sched_yield();
    data += 100; // RACE
    __atomic_fetch_add(&flag, 1, __ATOMIC_RELAXED); /* 1 -> 2 */
    pthread_join(t, NULL);
    printf("%d\n", data);
    return 0;
}
