// Twin of promise_future_norace.cpp: the worker writes the buffer after
// set_value, so main's read after get() is unordered with that write: a race.
#include <cstdio>
#include <future>
#include <thread>

static int buffer[4];

int main() {
    std::promise<int> p;
    std::future<int> f = p.get_future();
    std::thread t([&p] {
        p.set_value(4);
        for (int i = 0; i < 4; i++) buffer[i] = i + 1; // RACE
    });
    int n = f.get();
    int sum = 0;
    for (int i = 0; i < n; i++) sum += buffer[i]; // RACE
    t.join();
    std::printf("%d\n", sum);
    return 0;
}
