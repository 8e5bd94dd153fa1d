// std::atomic<bool> flag with release store / acquire load: the load that
// sees true synchronizes with the store, no race on data.
#include <atomic>
#include <cstdio>
#include <thread>

static int data;
static std::atomic<bool> ready{false};

int main() {
    std::thread producer([] {
        data = 42;
        ready.store(true, std::memory_order_release);
    });
    while (!(ready.load(std::memory_order_acquire))) std::this_thread::yield();
    int v = data;
    producer.join();
    std::printf("%d\n", v);
    return 0;
}
