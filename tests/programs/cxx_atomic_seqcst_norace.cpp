// std::atomic<bool> flag with the default seq_cst store and load (which
// release and acquire): no race on data.
#include <atomic>
#include <cstdio>
#include <thread>

static int data;
static std::atomic<bool> ready{false};

int main() {
    std::thread producer([] {
        data = 42;
        ready.store(true);
    });
    while (!(ready.load())) std::this_thread::yield();
    int v = data;
    producer.join();
    std::printf("%d\n", v);
    return 0;
}
