// The modules' runner: the tasks the business modules declare (`tasks?(context)` in the module
// contract), in MODULE_JOB_CONCURRENCY slots of their own. Their jobs call Stripe (a subscription
// refresh), and while Stripe hangs each attempt holds its slot for the whole Stripe deadline: in
// their own slots they wait for each other only, never in front of an event's fulfilment.
import type { Task } from 'graphile-worker';
import type { BusinessModule, TaskContext } from '../module-contract.js';
import type { Runners } from './runners.js';

/** Starts the runner if any module has a task; none, and there is no such runner. */
export async function startModuleJobsRunner(
  runners: Runners,
  { modules, context, concurrency }: { modules: readonly BusinessModule[]; context: TaskContext; concurrency: number },
): Promise<void> {
  const tasks = moduleTasks(modules, context);
  if (Object.keys(tasks).length > 0) await runners.start('modules', { concurrency, taskList: tasks });
}

function moduleTasks(modules: readonly BusinessModule[], context: TaskContext): Record<string, Task> {
  const tasks: Record<string, Task> = {};
  for (const module of modules) {
    for (const [name, task] of Object.entries(module.tasks?.({ ...context, logger: context.logger.child({ module: module.name }) }) ?? {})) {
      // A module's task name is stored in its queued jobs: a prefix keeps two modules from sharing one.
      if (!name.startsWith(`${module.name}_`)) throw new Error(`task ${name} of module ${module.name} must start with "${module.name}_"`);
      tasks[name] = task;
    }
  }
  return tasks;
}
