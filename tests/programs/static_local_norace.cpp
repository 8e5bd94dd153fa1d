// C++ function-local statics are initialized exactly once, thread-safely:
// the compiler guards the initialization with __cxa_guard_acquire/release.
// Four threads call config() at once; the constructor is slow, so the threads
// that arrive while it runs wait inside __cxa_guard_acquire (the slow path).
// Every thread then reads the fields the constructor wrote: no race.
#include <cstdio>
#include <thread>
#include <unistd.h>

struct Config {
    int port;
    int retries;
    Config() {
        usleep(20000); // keeps the other threads in __cxa_guard_acquire
        port = 8080;
        retries = 3;
    }
};

static const Config &config() {
    static Config c;
    return c;
}

static int sums[4];

int main() {
    std::thread t[4];
    for (int i = 0; i < 4; i++)
        t[i] = std::thread([i] { sums[i] = config().port + config().retries; });
    for (auto &x : t) x.join();
    std::printf("%d %d %d %d\n", sums[0], sums[1], sums[2], sums[3]);
    return 0;
}
