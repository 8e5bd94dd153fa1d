// Twin of async_norace.cpp: main changes the input after starting the task
// and before get(), while the task reads it: a race.
#include <cstdio>
#include <future>

static int input[4];

int main() {
    auto f = std::async(std::launch::async, [] {
        int s = 0;
        for (int v : input) s += v; // RACE
        return s;
    });
    input[2] = 5; // RACE
    int r = f.get();
    std::printf("%d\n", r);
    return 0;
}
