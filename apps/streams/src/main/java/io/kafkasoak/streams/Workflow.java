package io.kafkasoak.streams;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * The workflow engine of the "Kafka Streams workflow rolled back" reproduction, as pure functions on JSON records so
 * that both designs of {@link WorkflowTopology} share them.
 *
 * <p>An execution ({@code SOAK_EXECUTIONS_TOPIC}, keyed by its id, the input record's id) is a list of task runs, each
 * {@code CREATED < RUNNING < SUCCESS}. An input record creates an execution ({@code CREATED}, no task runs); its next
 * step creates {@code parallelTasks} task runs at once and orders each from the worker ({@code SOAK_TASKS_TOPIC});
 * the worker answers each order with {@code RUNNING} then {@code SUCCESS} ({@code SOAK_RESULTS_TOPIC}); each result
 * moves its task run; when every task run succeeded the execution ends ({@code SUCCESS}) and its end is the output
 * record of the data contract. Every version of an execution the app commits is on the executions topic, in order:
 * what the checker reads to find an execution whose state went backwards.
 */
final class Workflow {
    static final String CREATED = "CREATED";
    static final String RUNNING = "RUNNING";
    static final String SUCCESS = "SUCCESS";
    static final String TASK_RUNS = "task_runs";

    private static final ObjectMapper JSON = new ObjectMapper();

    private Workflow() {
    }

    /** A new execution from an input record of the data contract ({@code id, key, seq}). */
    static ObjectNode created(JsonNode input, int instance, int partition, long offset) {
        ObjectNode execution = JSON.createObjectNode()
            .put("id", input.get("id").asLong()).put("key", input.get("key").asText()).put("seq", input.get("seq").asLong())
            .put("state", CREATED).put("instance", instance).put("in_partition", partition).put("in_offset", offset);
        execution.putObject(TASK_RUNS);
        return execution;
    }

    /** The execution's next version when its next step changes it (task runs created, or the end), else null. */
    static String advance(String value, int parallelTasks, int instance) {
        ObjectNode execution = read(value);
        if (needsTasks(execution)) {
            ObjectNode runs = (ObjectNode) execution.get(TASK_RUNS);
            for (String task : tasks(parallelTasks)) {
                runs.put(task, CREATED);
            }
            return execution.put("state", RUNNING).put("instance", instance).toString();
        }
        return finishing(execution) ? execution.put("state", SUCCESS).put("instance", instance).toString() : null;
    }

    /** The worker orders this version of an execution gives: one per parallel task when it has none yet. */
    static List<String> orders(String value, int parallelTasks) {
        ObjectNode execution = read(value);
        List<String> orders = new ArrayList<>();
        if (needsTasks(execution)) {
            for (String task : tasks(parallelTasks)) {
                orders.add(JSON.createObjectNode().put("id", execution.get("id").asLong()).put("task", task).toString());
            }
        }
        return orders;
    }

    /** The worker role: an order becomes its results, RUNNING and then SUCCESS. */
    static List<String> work(String order, int instance) {
        JsonNode task = read(order);
        List<String> results = new ArrayList<>();
        for (String state : List.of(RUNNING, SUCCESS)) {
            results.add(JSON.createObjectNode().put("id", task.get("id").asLong()).put("task", task.get("task").asText())
                .put("state", state).put("instance", instance).toString());
        }
        return results;
    }

    /** Whether a record on the single writer's input is a worker result (else it is a new execution). */
    static boolean isResult(String value) {
        return read(value).has("task");
    }

    /** The execution with a worker result applied to it, as the result says: the result decides the state. */
    static String apply(String execution, String result, int instance) {
        ObjectNode next = read(execution);
        JsonNode change = read(result);
        ((ObjectNode) next.get(TASK_RUNS)).put(change.get("task").asText(), change.get("state").asText());
        return next.put("instance", instance).toString();
    }

    /** Whether this version of an execution is the one its end is decided on: every task run succeeded, not ended. */
    static boolean finishing(String value) {
        return finishing(read(value));
    }

    /** The data contract's output record of an execution that ended. */
    static String end(String value, int instance) {
        ObjectNode execution = read(value);
        return JSON.createObjectNode()
            .put("id", execution.get("id").asLong()).put("key", execution.get("key").asText())
            .put("seq", execution.get("seq").asLong()).put("state", SUCCESS).put("instance", instance)
            .put("in_partition", execution.get("in_partition").asInt())
            .put("in_offset", execution.get("in_offset").asLong()).toString();
    }

    private static boolean needsTasks(ObjectNode execution) {
        return CREATED.equals(execution.get("state").asText()) && execution.get(TASK_RUNS).isEmpty();
    }

    private static boolean finishing(ObjectNode execution) {
        JsonNode runs = execution.get(TASK_RUNS);
        if (!RUNNING.equals(execution.get("state").asText()) || runs.isEmpty()) {
            return false;
        }
        for (Iterator<Map.Entry<String, JsonNode>> it = runs.fields(); it.hasNext(); ) {
            if (!SUCCESS.equals(it.next().getValue().asText())) {
                return false;
            }
        }
        return true;
    }

    private static List<String> tasks(int parallelTasks) {
        List<String> tasks = new ArrayList<>();
        for (int t = 1; t <= parallelTasks; t++) {
            tasks.add("t" + t);
        }
        return tasks;
    }

    static ObjectNode read(String value) {
        try {
            return (ObjectNode) JSON.readTree(value);
        } catch (java.io.IOException | ClassCastException e) {
            throw new IllegalArgumentException("not a workflow record of the data contract: " + value, e);
        }
    }
}
