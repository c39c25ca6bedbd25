// A module that exports no task definition.
export const answer = 42;
export function defineTaskLater() {}
