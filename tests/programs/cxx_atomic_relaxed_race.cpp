// std::atomic<bool> flag with memory_order_relaxed: seeing the flag set
// orders nothing, so the write and the read of data race.
#include <atomic>
#include <cstdio>
#include <thread>

static int data;
static std::atomic<bool> ready{false};

int main() {
    std::thread producer([] {
        data = 42; // RACE
        ready.store(true, std::memory_order_relaxed);
    });
    while (!(ready.load(std::memory_order_relaxed))) std::this_thread::yield();
    int v = data; // RACE
    producer.join();
    std::printf("%d\n", v);
    return 0;
}
