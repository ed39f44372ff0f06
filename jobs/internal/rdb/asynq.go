package rdb

// asynq's own key names that the job system reads or writes from outside
// asynq, copied from asynq's internal/base (base.QueueKeyPrefix, LeaseKey,
// PendingKey, ActiveKey, TaskKey) of AsynqVersion. asynq does not export
// them; TestAsynqNamesPinned fails when go.mod names another asynq version
// or when the module source no longer builds these names, so an upgrade
// re-checks them.

// AsynqVersion is the asynq release these names were checked against.
const AsynqVersion = "v0.26.0"

func asynqQueuePrefix(queue string) string { return "asynq:{" + queue + "}:" }

// LeaseKey is a queue's lease set: task id -> lease expiry (unix s).
func LeaseKey(queue string) string { return asynqQueuePrefix(queue) + "lease" }

// PendingKey is a queue's list of waiting task ids (LPUSH on enqueue,
// taken from the right).
func PendingKey(queue string) string { return asynqQueuePrefix(queue) + "pending" }

// ActiveKey is a queue's list of running task ids.
func ActiveKey(queue string) string { return asynqQueuePrefix(queue) + "active" }

// TaskKey is the hash of one task.
func TaskKey(queue, id string) string { return asynqQueuePrefix(queue) + "t:" + id }

// AsynqKeyPrefix starts every key asynq keeps.
const AsynqKeyPrefix = "asynq:"

// Names the job system gives asynq: its queues and task types.

// QueueName is the asynq queue of a model's jobs.
func QueueName(model string) string { return "fashiond:" + model }

// WebhookQueue is the asynq queue of webhook deliveries.
const WebhookQueue = "fashiond:webhooks"

// Task types.
const (
	TaskJob     = "fashiond:job"
	TaskWebhook = "fashiond:webhook"
)
