# frozen_string_literal: true

module LlmFailover
  module ActiveRecord
    # The tables of the ActiveRecord integration. create_tables! applies this to a
    # connection; the `llm_failover:install` generator writes the same schema as a
    # migration (spec/active_record/generator_spec.rb keeps the two equal).
    module Schema
      DEFAULT_TABLES = { chats: "chats", messages: "messages", attempts: "llm_failover_attempts",
                         circuit_events: "llm_failover_circuit_events", vectors: "llm_failover_vectors" }.freeze
      # PostgreSQL's limit on identifiers (MySQL's is 64): longer index names fail the migration.
      MAX_NAME = 63

      module_function

      # "index_<table>_on_<what>", or when that passes MAX_NAME, as much of it as fits
      # followed by a digest of the whole name, so that two long names stay apart.
      # @return [String]
      def index_name(table, what)
        name = "index_#{table}_on_#{what}"
        return name if name.length <= MAX_NAME

        require "digest"
        "#{name[0, MAX_NAME - 11]}_#{Digest::SHA256.hexdigest(name)[0, 10]}"
      end

      # The tool calls' table of a messages table: "tool_calls" beside "messages",
      # "<message>_tool_calls" beside any other (utterances: utterance_tool_calls), so
      # that two message tables never share one.
      # @return [String]
      def tool_calls_table(messages)
        messages = messages.to_s
        messages == "messages" ? "tool_calls" : "#{messages.singularize}_tool_calls"
      end

      # Creates the gem's six tables (chats, messages, tool calls, attempts, circuit
      # events, vectors) on +connection+ (anything with create_table/add_index: a
      # connection or a migration).
      # @param foreign_key [String, nil] messages' reference to chats (chat_id for "chats")
      # @param tool_calls [String, nil] nil: tool_calls_table(messages)
      # @param force [Boolean] drop and recreate the tables
      # @param if_not_exists [Boolean] leave existing tables alone (scripts rerun)
      def define(connection, chats: DEFAULT_TABLES[:chats], messages: DEFAULT_TABLES[:messages],
                 attempts: DEFAULT_TABLES[:attempts], circuit_events: DEFAULT_TABLES[:circuit_events],
                 tool_calls: nil, vectors: DEFAULT_TABLES[:vectors], foreign_key: nil, force: false,
                 if_not_exists: true)
        foreign_key ||= "#{chats.to_s.singularize}_id"
        tool_calls ||= tool_calls_table(messages)
        # Tool calls reference messages, messages chats: drop them first, create them after.
        if force
          [tool_calls, messages, chats, attempts, circuit_events, vectors].each do |table|
            connection.drop_table(table, if_exists: true)
          end
        end
        table_options = { if_not_exists: if_not_exists && !force }

        connection.create_table(chats, **table_options) do |t|
          t.string :model
          t.string :provider
          t.string :backup_model
          t.string :backup_provider
          t.integer :quota
          t.string :feature
          t.datetime :cancel_requested_at
          t.timestamps
        end

        connection.create_table(messages, **table_options) do |t|
          t.references foreign_key.to_s.delete_suffix("_id"), null: false, foreign_key: { to_table: chats }
          t.string :role, null: false
          t.text :content
          t.string :model
          t.string :provider
          t.string :status, null: false, default: "complete"
          t.integer :input_tokens
          t.integer :output_tokens
          t.string :idempotency_key
          t.text :failure_reason # a failed answer's reason (a row a dead process left streaming)
          t.string :tool_call_id # a role "tool" message: the call it is the result of
          t.text :attachments_data # a user message's images and PDFs as JSON (StoredAttachments); MySQL: LONGTEXT
          t.timestamps
        end
        # The quota count: this month's completed answers of one model.
        connection.add_index(messages, %i[model created_at], name: index_name(messages, "model_and_created_at"),
                                                             if_not_exists: true)
        # ask(text, idempotency_key:): one user message per key and chat.
        connection.add_index(messages, [foreign_key, :idempotency_key], unique: true,
                                                                      name: index_name(messages, "idempotency_key"),
                                                                      if_not_exists: true)

        connection.create_table(attempts, **table_options) do |t|
          t.string :request_id, null: false, limit: 36
          t.integer :attempt, null: false
          t.string :provider, null: false
          t.string :model, null: false
          t.string :feature
          t.boolean :success, null: false
          t.string :error_class
          t.text :error_message
          t.integer :http_status
          t.boolean :failover_eligible, null: false, default: false
          t.float :retry_after
          t.float :latency_ms
          t.float :first_token_ms
          t.integer :input_tokens
          t.integer :output_tokens
          t.datetime :started_at, null: false
          t.string :provider_request_id
          t.boolean :cached, null: false, default: false
          t.boolean :cancelled, null: false, default: false
          t.json :scrubbed
          t.boolean :skipped, null: false, default: false
          t.boolean :hedged, null: false, default: false
          t.string :turn_id # the turn the call answered: a retried job's calls share it
          t.string :cache_tier, limit: 16
          t.float :similarity
        end
        connection.add_index(attempts, %i[request_id attempt], unique: true,
                                                               name: index_name(attempts, "request_id_and_attempt"),
                                                               if_not_exists: true)
        connection.add_index(attempts, :started_at, name: index_name(attempts, "started_at"), if_not_exists: true)
        connection.add_index(attempts, %i[provider model started_at],
                             name: index_name(attempts, "provider_model_started_at"), if_not_exists: true)
        # The report looks for a later answer of a failed call's turn.
        connection.add_index(attempts, :turn_id, name: index_name(attempts, "turn_id"), if_not_exists: true)
        define_circuit_events(connection, circuit_events, **table_options)
        define_tool_calls(connection, tool_calls, messages: messages, **table_options)
        define_vectors(connection, vectors, **table_options)
        nil
      end

      # The tool calls an assistant message asked for (ToolCallRow), one row per call:
      # stored before the call runs, its outcome stored before the next turn is sent.
      # The result also goes in a role "tool" message (messages.tool_call_id).
      def define_tool_calls(connection, table, messages:, **table_options)
        connection.create_table(table, **table_options) do |t|
          t.references :message, null: false, index: false, foreign_key: { to_table: messages }
          t.string :call_id, null: false # the id in the canonical transcript
          t.string :provider_call_id # the id the provider gave, when it was mapped
          t.string :name, null: false
          t.text :arguments # the JSON text as the model wrote it (kept even when it is not JSON)
          t.string :provider # whose turn asked for the call
          t.string :model
          # pending (awaiting_approval) -> approved -> running -> succeeded | failed | rejected | denied
          t.string :status, null: false, default: "pending"
          t.boolean :awaiting_approval, null: false, default: false
          t.text :result # what the model is sent
          t.string :error_kind
          t.string :error_class
          t.text :error_message
          t.datetime :started_at
          t.datetime :finished_at
          t.timestamps
        end
        connection.add_index(table, %i[message_id call_id], unique: true,
                                                            name: index_name(table, "message_id_and_call_id"),
                                                            if_not_exists: true)
        connection.add_index(table, :call_id, name: index_name(table, "call_id"), if_not_exists: true)
      end

      # The semantic cache's shared vectors (ActiveRecordIndex): one row per add, read
      # by each process's mirror in id order per partition.
      def define_vectors(connection, table, **table_options)
        connection.create_table(table, **table_options) do |t|
          t.string :partition_key, null: false, limit: 64 # SHA-256 of the partition, hex
          t.integer :dimensions, null: false
          t.binary :vector, null: false # little-endian float32
          t.text :value, null: false
          t.datetime :created_at, null: false
        end
        connection.add_index(table, %i[partition_key id], name: index_name(table, "partition_key_and_id"),
                                                          if_not_exists: true)
      end

      # The circuit transitions CircuitLog writes (one row per change, written once for a
      # fleet) and Report#circuit_windows reads.
      def define_circuit_events(connection, table, **table_options)
        connection.create_table(table, **table_options) do |t|
          t.string :provider, null: false
          t.string :model, null: false
          t.string :from_state, null: false
          t.string :to_state, null: false
          t.string :reason, null: false
          t.string :error_class
          t.datetime :occurred_at, null: false
        end
        connection.add_index(table, %i[provider model occurred_at],
                             name: index_name(table, "provider_model_occurred_at"), if_not_exists: true)
        connection.add_index(table, :occurred_at, name: index_name(table, "occurred_at"), if_not_exists: true)
      end
    end
  end
end
