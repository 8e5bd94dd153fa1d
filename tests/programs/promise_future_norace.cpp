// std::promise / std::future: the worker fills a buffer, then set_value;
// main's get() returns only after set_value and is ordered after it: the
// buffer read is race-free.
#include <cstdio>
#include <future>
#include <thread>

static int buffer[4];

int main() {
    std::promise<int> p;
    std::future<int> f = p.get_future();
    std::thread t([&p] {
        for (int i = 0; i < 4; i++) buffer[i] = i + 1;
        p.set_value(4);
    });
    int n = f.get();
    int sum = 0;
    for (int i = 0; i < n; i++) sum += buffer[i];
    t.join();
    std::printf("%d\n", sum);
    return 0;
}
