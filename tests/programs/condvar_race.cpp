// Twin of condvar_norace.cpp: the producer fills in the item after pushing
// it and unlocking, so the consumer that pops it reads the payload unordered
// with that write: a race. (The consumer waits with a predicate; the
// producer notifies under the mutex and takes it no more, so no later lock
// handoff can order the write before the read.)
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <thread>

struct Item {
    long payload;
};

static std::mutex m;
static std::condition_variable cv;
static std::deque<Item *> queue;
static long got;

int main() {
    std::thread consumer([] {
        std::unique_lock<std::mutex> l(m);
        cv.wait(l, [] { return !queue.empty(); });
        Item *it = queue.front();
        queue.pop_front();
        l.unlock();
        got = it->payload; // RACE
    });
    static Item item;
    {
        std::lock_guard<std::mutex> g(m);
        queue.push_back(&item);
        cv.notify_one();
    }
    item.payload = 7; // RACE
    consumer.join();
    std::printf("%ld\n", got);
    return 0;
}
