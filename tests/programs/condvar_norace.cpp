// A producer/consumer queue with std::condition_variable: consumers wait with
// a predicate, the producer pushes under the mutex and calls notify_one,
// then sets a stop flag and calls notify_all. Every item is written before
// it is pushed and read after it is popped, both under the mutex: no race.
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
static bool stop;
static long got[2];

int main() {
    auto consumer = [](int c) {
        for (;;) {
            std::unique_lock<std::mutex> l(m);
            cv.wait(l, [] { return stop || !queue.empty(); });
            if (queue.empty()) return;
            Item *it = queue.front();
            queue.pop_front();
            l.unlock();
            got[c] += it->payload;
            delete it;
        }
    };
    std::thread c0(consumer, 0), c1(consumer, 1);
    for (int i = 0; i < 20; i++) {
        Item *it = new Item;
        it->payload = i;
        std::lock_guard<std::mutex> g(m);
        queue.push_back(it);
        cv.notify_one();
    }
    {
        std::lock_guard<std::mutex> g(m);
        stop = true;
    }
    cv.notify_all();
    c0.join();
    c1.join();
    std::printf("%ld\n", got[0] + got[1]);
    return 0;
}
