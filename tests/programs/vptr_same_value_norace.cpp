// A thread deletes an object while another still calls it, but the delete
// waits (in ~Worker's body) until the caller says it is done. Before that
// wait, ~Worker stores Worker's vtable pointer into the object: the value it
// already holds, so nothing changes and no virtual call can observe it.
// Every vptr store that does change the value (~Task's) comes after the
// wait: no race. A detector that treats the same-value store as a write
// reports a false race.
#include <cstdio>
#include <semaphore.h>
#include <thread>

static sem_t done;

struct Task {
    virtual void run() {}
    virtual void finish() { sem_post(&done); }
    virtual ~Task() {}
};

struct Worker : Task {
    int runs = 0;
    void run() override { runs++; }
    ~Worker() override { sem_wait(&done); }
};

static Task *task;

int main() {
    sem_init(&done, 0, 0);
    task = new Worker;
    std::thread user([] {
        task->run();
        task->finish();
    });
    std::thread killer([] { delete task; });
    user.join();
    killer.join();
    sem_destroy(&done);
    std::puts("ok");
    return 0;
}
