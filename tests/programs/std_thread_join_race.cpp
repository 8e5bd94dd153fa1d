// std::thread writes a result that main reads before join(): unordered, a
// race.
#include <cstdio>
#include <thread>

static int result;

int main() {
    std::thread t([] {
        result = 42; // RACE
    });
    int v = result; // RACE
    t.join();
    std::printf("%d\n", v);
    return 0;
}
