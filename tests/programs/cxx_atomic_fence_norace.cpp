// std::atomic_thread_fence pair: release fence + relaxed store, relaxed
// load + acquire fence. The fences synchronize, so there is no race on data.
// ThreadSanitizer does not model fences and reports a false race here.
#include <atomic>
#include <cstdio>
#include <thread>

static int data;
static std::atomic<bool> ready{false};

int main() {
    std::thread producer([] {
        data = 42;
        std::atomic_thread_fence(std::memory_order_release);
        ready.store(true, std::memory_order_relaxed);
    });
    while (!(ready.load(std::memory_order_relaxed) && (std::atomic_thread_fence(std::memory_order_acquire), true))) std::this_thread::yield();
    int v = data;
    producer.join();
    std::printf("%d\n", v);
    return 0;
}
