# frozen_string_literal: true

module LlmFailover
  module ActiveRecord
    module Schema
      # The one description of the gem's tables: their columns, options, indexes and
      # the comments a migration carries. Schema.define applies it to a connection;
      # the llm_failover:install generator writes it as a migration, and
      # llm_failover:upgrade writes the parts of it ADDED lists that an app lacks
      # (spec/llm_failover/active_record/schema_spec.rb checks the three end alike).
      #
      # A feature that adds a column writes it in its table's block below and appends
      # [role, column] to ADDED; one that adds a table appends a Table to TABLES and
      # [role] to ADDED.

      # One column: t.<type> :<name>, <options> in a migration. +note+ is written after
      # it, +above+ on the lines before it.
      Column = Struct.new(:type, :name, :options, :note, :above, keyword_init: true)
      # One index: +what+ ends its name (Schema.index_name).
      Index = Struct.new(:columns, :what, :unique, :above, keyword_init: true)
      # One table as created under the app's names.
      Created = Struct.new(:role, :name, :columns, :indexes, :above, keyword_init: true)

      # The names of an install's tables by role, and the messages' reference to their
      # chat (chat for chats: messages.chat_id).
      Names = Struct.new(:tables, :reference, keyword_init: true) do
        # @return [String] the table of +role+
        def fetch(role)
          tables.fetch(role)
        end
      end

      # What a table block says: the columns and indexes, in their order.
      class Builder
        attr_reader :columns, :indexes

        def initialize
          @columns = []
          @indexes = []
        end

        %i[string text integer float decimal boolean datetime json binary references].each do |type|
          define_method(type) do |name, note: nil, above: nil, **options|
            @columns << Column.new(type: type, name: name.to_sym, options: options, note: note, above: above)
          end
        end

        def timestamps
          @columns << Column.new(type: :timestamps, options: {})
        end

        # @param columns [Array<Symbol>, Symbol]
        def index(columns, what:, unique: false, above: nil)
          @indexes << Index.new(columns: Array(columns).map(&:to_sym), what: what, unique: unique, above: above)
        end
      end

      # A table of the gem: its role, its name where the app gives none, the comment
      # above it, and the block (of a Builder and the Names) that lists its columns.
      class Table
        attr_reader :role, :default_name

        def initialize(role, default_name, above: nil, &body)
          @role = role
          @default_name = default_name
          @above = above
          @body = body
        end

        # @param names [Names]
        # @return [Created]
        def under(names)
          builder = Builder.new
          @body.call(builder, names)
          Created.new(role: role, name: names.fetch(role), columns: builder.columns, indexes: builder.indexes,
                      above: @above)
        end
      end

      # In the order they are created (tool calls reference messages, messages chats).
      TABLES = [
        Table.new(:chats, "chats") do |t, _names|
          t.string :model
          t.string :provider
          t.string :backup_model
          t.string :backup_provider
          t.integer :quota, note: "0 or NULL: unlimited"
          t.string :feature
          t.datetime :cancel_requested_at, note: "chat.cancel! (a Stop button): the streaming ask stops"
          t.timestamps
        end,
        Table.new(:messages, "messages") do |t, names|
          t.references names.reference, null: false, foreign_key: { to_table: names.fetch(:chats).to_sym }
          t.string :role, null: false
          t.text :content
          t.string :model
          t.string :provider
          t.string :status, null: false, default: "complete",
                            above: "assistant: streaming -> complete | failed | cancelled; user: answering while a call\n" \
                                   "holds its idempotency_key's turn"
          t.integer :input_tokens
          t.integer :output_tokens
          t.string :idempotency_key, note: "ask(text, idempotency_key: job_id): a retried job stores no second prompt"
          t.string :claimed_by, note: "the process answering the turn (host, pid): a rerun takes a dead one's claim"
          t.text :failure_reason, note: "a failed answer's reason (a row a dead process left streaming)"
          t.string :tool_call_id, note: 'a role "tool" message: the call it is the result of'
          t.text :attachments_data,
                 note: "ask(text, with: files) without ActiveStorage: the files as JSON (MySQL: LONGTEXT)"
          t.text :reasoning, note: "an answer's reasoning state for its host's next turn (opaque; MySQL: LONGTEXT)",
                             above: "Reasoning state: the Responses API's encrypted items, Gemini's signature,\n" \
                                    "sent back to the protocol and provider that made them only"
          t.string :reasoning_api, note: "its protocol: responses, gemini"
          t.string :reasoning_origin, note: "the provider that made it"
          t.timestamps
          t.index %i[model created_at], what: "model_and_created_at",
                                        above: "The quota count: this month's completed answers of one model."
          t.index [:"#{names.reference}_id", :idempotency_key], what: "idempotency_key", unique: true
        end,
        Table.new(:attempts, "llm_failover_attempts") do |t, _names|
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
          t.boolean :cached, null: false, default: false, note: "answered by the response cache: no request"
          t.boolean :cancelled, null: false, default: false
          t.json :scrubbed,
                 note: "what the scrubber replaced in the request, by kind ({\"card\": 1}); NULL when it did not run"
          t.boolean :skipped, null: false, default: false, note: "the target's circuit was open: no request"
          t.boolean :hedged, null: false, default: false,
                             note: "one of a hedged request's two attempts (hedge_after)"
          t.string :turn_id, note: "the turn the call answered (the user message): a retried job's calls share it"
          t.string :cache_tier, limit: 16, note: "a cache hit's tier: exact or semantic"
          t.float :similarity, note: "a semantic hit's cosine similarity"
          t.integer :cached_input_tokens, note: "of input_tokens, read from the provider's prompt cache"
          t.integer :cache_write_tokens, note: "of input_tokens, written to the provider's prompt cache"
          t.decimal :cost, precision: 18, scale: 10, note: "USD at the configured prices; NULL: no price known"
          t.decimal :cost_saved, precision: 18, scale: 10, note: "a cache hit's: what the answer cost when made"
          t.string :host, note: "the provider entry that served it: a pool's host, or the provider; NULL: a cache hit"
          t.index %i[request_id attempt], what: "request_id_and_attempt", unique: true
          t.index :started_at, what: "started_at"
          t.index %i[provider model started_at], what: "provider_model_started_at"
          t.index :turn_id, what: "turn_id"
        end,
        Table.new(:circuit_events, "llm_failover_circuit_events",
                  above: "Circuit changes (CircuitLog): the report's incidents from open to closed.") do |t, _names|
          t.string :provider, null: false
          t.string :model, null: false
          t.string :from_state, null: false
          t.string :to_state, null: false
          t.string :reason, null: false
          t.string :error_class
          t.datetime :occurred_at, null: false
          t.index %i[provider model occurred_at], what: "provider_model_occurred_at"
          t.index :occurred_at, what: "occurred_at"
        end,
        # Named after the messages table (Schema.tool_calls_table) where the app gives no name.
        Table.new(:tool_calls, "tool_calls",
                  above: "Tool calls (chat.with_tool): one row per call an answer asked for, stored before\n" \
                         "the tool runs and again with its outcome, so a retried job never runs it twice.") do |t, names|
          t.references :message, null: false, index: false, foreign_key: { to_table: names.fetch(:messages).to_sym }
          t.string :call_id, null: false, note: "the id in the canonical transcript"
          t.string :provider_call_id, note: "the id the provider gave, when it was mapped"
          t.string :name, null: false
          t.text :arguments, note: "the JSON text as the model wrote it (kept even when it is not JSON)"
          t.string :provider, note: "whose turn asked for the call"
          t.string :model
          t.string :status, null: false, default: "pending",
                            above: "pending (awaiting_approval) -> approved -> running -> succeeded | failed | " \
                                   "rejected | denied"
          t.boolean :awaiting_approval, null: false, default: false
          t.text :result, note: "what the model is sent"
          t.string :error_kind
          t.string :error_class
          t.text :error_message
          t.datetime :started_at
          t.datetime :finished_at
          t.text :signature, note: "the host's signature of the call (Gemini's thoughtSignature), sent back to it"
          t.timestamps
          t.index %i[message_id call_id], what: "message_id_and_call_id", unique: true
          t.index :call_id, what: "call_id"
        end,
        Table.new(:vectors, "llm_failover_vectors",
                  above: "The semantic cache's shared vectors (LlmFailover::ActiveRecordIndex): one row per\n" \
                         "add, read by each process's mirror in id order per partition.") do |t, _names|
          t.string :partition_key, null: false, limit: 64, note: "SHA-256 of the partition, hex"
          t.integer :dimensions, null: false
          t.binary :vector, null: false, note: "little-endian float32"
          t.text :value, null: false
          t.datetime :created_at, null: false
          t.index %i[partition_key id], what: "partition_key_and_id"
        end
      ].freeze

      # PostgreSQL searches the semantic cache's vectors itself where pgvector 0.8 or later
      # is installed (ActiveRecordIndex::Pgvector). On PostgreSQL the vectors table gets an
      # embedding column (float4[]: a type Rails dumps to schema.rb without pgvector's
      # gem), and where pgvector is there an HNSW index per DIMENSIONS on it cast to
      # pgvector's type, partial (WHERE dimensions = N) beside the partition_key index.
      # Not in TABLES: SQLite and MySQL have no arrays; there each process mirrors.
      module VectorSearch
        COLUMN = :embedding
        # text-embedding-3-small (and ada-002), text-embedding-3-large. Another
        # dimension is searched without an index: exactly, row by row.
        DIMENSIONS = [1536, 3072].freeze
        # The first pgvector with iterative index scans: a filtered HNSW search finds a
        # partition's rows however many others the table holds.
        MIN_VERSION = "0.8.0"
        # The pgvector release the server would install (nil: none).
        AVAILABLE = "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'"
        ABOVE = "PostgreSQL searches the semantic cache's vectors itself where pgvector #{MIN_VERSION} or later\n" \
                "is installed (LlmFailover::ActiveRecordIndex); elsewhere each process mirrors them. pgvector\n" \
                "is not a trusted extension: without a superuser's rights, have one run CREATE EXTENSION vector."

        module_function

        # @param version [String, nil] a pgvector release
        # @return [Boolean] whether it is MIN_VERSION or later
        def usable?(version)
          !version.nil? && Gem::Version.new(version) >= Gem::Version.new(MIN_VERSION)
        end

        # pgvector's type an HNSW index takes at +dim+ (vector to 2,000, halfvec to
        # 4,000), nil past them.
        def type(dim)
          if dim <= 2000 then "vector"
          elsif dim <= 4000 then "halfvec"
          end
        end

        # +expression+ as the index of +dim+ reads it: the planner uses the index for an
        # ORDER BY cast(COLUMN, dim) <=> cast(query, dim).
        # @return [String]
        def cast(expression, dim)
          "#{expression}::#{type(dim) || 'vector'}(#{dim})"
        end

        # The indexes of +table+: [expression, add_index options] each.
        # @return [Array<Array(String, Hash)>]
        def indexes(table)
          DIMENSIONS.map do |dim|
            ["(#{cast(COLUMN, dim)}) #{type(dim)}_cosine_ops",
             { using: :hnsw, where: "dimensions = #{dim}", name: Schema.index_name(table, "#{COLUMN}_#{dim}") }]
          end
        end
      end

      # What an install creates that the first release's did not
      # (spec/fixtures/migrations holds that one), in the order it came: [role, column]
      # for a column (with the indexes that cover it), [role] for a table, and
      # [:vectors, VectorSearch::COLUMN] for VectorSearch.
      # llm_failover:upgrade adds those an app's migrations lack, in this order.
      ADDED = [
        %i[chats cancel_requested_at], %i[messages idempotency_key], %i[attempts cached], %i[attempts cancelled],
        %i[messages failure_reason], %i[attempts scrubbed], %i[attempts skipped], %i[attempts hedged],
        %i[attempts turn_id], %i[circuit_events], %i[messages tool_call_id], %i[tool_calls], %i[vectors],
        %i[attempts cache_tier], %i[attempts similarity], %i[messages attachments_data], %i[messages claimed_by],
        %i[attempts cached_input_tokens], %i[attempts cache_write_tokens], %i[attempts cost], %i[attempts cost_saved],
        %i[vectors embedding], %i[attempts host], %i[messages reasoning], %i[messages reasoning_api],
        %i[messages reasoning_origin], %i[tool_calls signature]
      ].freeze
    end
  end
end
