# frozen_string_literal: true

module LlmFailover
  module Generators
    # What `llm_failover:install` creates today that an earlier install did not: the
    # columns and tables added since the first release, each with the migration code
    # that adds it and takes it away. `llm_failover:upgrade` writes those an app's
    # migrations lack.
    #
    # A feature that adds a column or a table to the install migration appends one
    # entry to LIST (a Column or a Table; anything answering the same four methods
    # will do). Tables are named by role (:chats, :messages, :attempts,
    # :circuit_events, or a new one's): the generator resolves a role to the app's
    # table name (its --<role>-table option, else the entry's default).
    module Additions
      # How the code of an addition names the app's tables: tables.fetch(:attempts),
      # tables.reference (chat for chats: messages.chat_id).
      Tables = Struct.new(:names, :reference, keyword_init: true) do
        def fetch(role)
          names.fetch(role)
        end
      end

      # An index an addition creates: +columns+ an Array of names (or a proc of Tables
      # giving it, when a column is the chat reference); +what+ the end of its name.
      Index = Struct.new(:columns, :what, :unique, keyword_init: true) do
        def code(table, tables)
          cols = columns.respond_to?(:call) ? columns.call(tables) : columns
          name = LlmFailover::ActiveRecord::Schema.index_name(table, what)
          unique_part = unique ? ", unique: true" : ""
          ["add_index :#{table}, %i[#{cols.join(' ')}]#{unique_part}, name: \"#{name}\", if_not_exists: true"]
        end

        def drop(table)
          name = LlmFailover::ActiveRecord::Schema.index_name(table, what)
          ["remove_index :#{table}, name: \"#{name}\", if_exists: true"]
        end
      end

      # A column added to an existing table: skipped where the table has it.
      class Column
        attr_reader :role, :name

        # @param role [Symbol] the table's role (:chats, :messages, :attempts, ...)
        # @param name [Symbol] the column
        # @param type [Symbol] its migration type (:string, :boolean, :json, ...)
        # @param options [String] the rest of add_column's arguments, as written
        # @param comment [String] why it is there, written above it
        # @param indexes [Array<Index>] created with it
        def initialize(role, name, type, options: nil, comment: nil, indexes: [])
          @role = role
          @name = name
          @type = type
          @options = options
          @comment = comment
          @indexes = indexes
        end

        # Lacking when the app's migrations create its table without it. A table they
        # do not create at all is not this addition's to make.
        # @return [Boolean]
        def missing?(known, tables)
          columns = known[tables.fetch(@role)]
          !columns.nil? && !columns.include?(@name.to_s)
        end

        # @return [Array<String>] lines of the migration's up
        def up(tables)
          table = tables.fetch(@role)
          add = "add_column :#{table}, :#{@name}, :#{@type}#{", #{@options}" if @options}"
          lines = @comment ? ["# #{@comment}"] : []
          lines += ["unless column_exists?(:#{table}, :#{@name})", "  #{add}", "end"]
          lines + @indexes.flat_map { |index| index.code(table, tables) }
        end

        # @return [Array<String>] lines of the migration's down
        def down(tables)
          table = tables.fetch(@role)
          @indexes.flat_map { |index| index.drop(table) } +
            ["remove_column :#{table}, :#{@name} if column_exists?(:#{table}, :#{@name})"]
        end
      end

      # A table added since the first release: created unless it exists.
      class Table
        attr_reader :role, :default_name

        # @param role [Symbol] its role; the generator's --<role>-table option names it
        # @param default_name [String] its name without that option
        # @param body [String, #call] the create_table block's lines (a proc of Tables
        #   when they name another table)
        # @param comment [String] what it holds, written above it
        # @param indexes [Array<Index>]
        def initialize(role, default_name, body:, comment: nil, indexes: [])
          @role = role
          @default_name = default_name
          @body = body
          @comment = comment
          @indexes = indexes
        end

        # @return [Boolean] whether the app's migrations never create it
        def missing?(known, tables)
          !known.key?(tables.fetch(@role))
        end

        # @return [Array<String>] lines of the migration's up
        def up(tables)
          table = tables.fetch(@role)
          body = @body.respond_to?(:call) ? @body.call(tables) : @body
          lines = @comment ? ["# #{@comment}"] : []
          lines += ["create_table :#{table}, if_not_exists: true do |t|"]
          lines += body.lines.map { |line| "  #{line.strip}" }
          lines += ["end"]
          lines + @indexes.flat_map { |index| index.code(table, tables) }
        end

        # @return [Array<String>] lines of the migration's down
        def down(tables)
          ["drop_table :#{tables.fetch(@role)}, if_exists: true"]
        end
      end

      # Roughly in the order they were added; each stands alone (an upgrade applies
      # them in this order, and its down takes them away in the reverse order).
      LIST = [
        Column.new(:chats, :cancel_requested_at, :datetime,
                   comment: "chat.cancel! (a Stop button): the streaming ask stops"),
        Column.new(:messages, :idempotency_key, :string,
                   comment: "ask(text, idempotency_key: job_id): a retried job stores no second prompt",
                   indexes: [Index.new(columns: ->(t) { [:"#{t.reference}_id", :idempotency_key] },
                                       what: "idempotency_key", unique: true)]),
        Column.new(:attempts, :cached, :boolean, options: "null: false, default: false",
                   comment: "answered by the response cache: no request"),
        Column.new(:attempts, :cancelled, :boolean, options: "null: false, default: false"),
        Column.new(:messages, :failure_reason, :text,
                   comment: "a failed answer's reason (a row a dead process left streaming)"),
        Column.new(:attempts, :scrubbed, :json,
                   comment: "what the scrubber replaced in the request, by kind ({\"card\": 1}); NULL when it did not run"),
        Column.new(:attempts, :skipped, :boolean, options: "null: false, default: false",
                   comment: "the target's circuit was open: no request"),
        Column.new(:attempts, :hedged, :boolean, options: "null: false, default: false",
                   comment: "one of a hedged request's two attempts (hedge_after): the loser is also cancelled"),
        Column.new(:attempts, :turn_id, :string,
                   comment: "the turn the call answered (the user message): a retried job's calls share it",
                   indexes: [Index.new(columns: %i[turn_id], what: "turn_id")]),
        Table.new(:circuit_events, "llm_failover_circuit_events",
                  comment: "Circuit changes (CircuitLog): the report's incidents from open to closed.",
                  body: <<~RUBY,
                    t.string :provider, null: false
                    t.string :model, null: false
                    t.string :from_state, null: false
                    t.string :to_state, null: false
                    t.string :reason, null: false
                    t.string :error_class
                    t.datetime :occurred_at, null: false
                  RUBY
                  indexes: [Index.new(columns: %i[provider model occurred_at], what: "provider_model_occurred_at"),
                            Index.new(columns: %i[occurred_at], what: "occurred_at")]),
        Column.new(:messages, :tool_call_id, :string, comment: 'a role "tool" message: the call it is the result of'),
        # Named after the messages table (Schema.tool_calls_table), which the generator gives.
        Table.new(:tool_calls, "tool_calls",
                  comment: "Tool calls (chat.with_tool): stored before a tool runs and with its outcome, " \
                           "so a retried job never runs it twice.",
                  body: lambda { |t|
                    <<~RUBY
                      t.references :message, null: false, index: false, foreign_key: { to_table: :#{t.fetch(:messages)} }
                      t.string :call_id, null: false
                      t.string :provider_call_id
                      t.string :name, null: false
                      t.text :arguments
                      t.string :provider
                      t.string :model
                      t.string :status, null: false, default: "pending"
                      t.boolean :awaiting_approval, null: false, default: false
                      t.text :result
                      t.string :error_kind
                      t.string :error_class
                      t.text :error_message
                      t.datetime :started_at
                      t.datetime :finished_at
                      t.timestamps
                    RUBY
                  },
                  indexes: [Index.new(columns: %i[message_id call_id], what: "message_id_and_call_id", unique: true),
                            Index.new(columns: %i[call_id], what: "call_id")]),
        Table.new(:vectors, "llm_failover_vectors",
                  comment: "The semantic cache's shared vectors (ActiveRecordIndex).",
                  body: <<~RUBY,
                    t.string :partition_key, null: false, limit: 64 # SHA-256 of the partition, hex
                    t.integer :dimensions, null: false
                    t.binary :vector, null: false # little-endian float32
                    t.text :value, null: false
                    t.datetime :created_at, null: false
                  RUBY
                  indexes: [Index.new(columns: %i[partition_key id], what: "partition_key_and_id")]),
        Column.new(:attempts, :cache_tier, :string, options: "limit: 16",
                   comment: "a cache hit's tier: exact or semantic"),
        Column.new(:attempts, :similarity, :float, comment: "a semantic hit's cosine similarity"),
        Column.new(:messages, :attachments_data, :text,
                   comment: "ask(text, with: files) without ActiveStorage: the files as JSON (MySQL: LONGTEXT)")
      ].freeze
    end
  end
end
