# frozen_string_literal: true

require_relative "../../records/warnings"

module LlmFailover
  module ActiveRecord
    class MessageStore
      # The answers a dead process left streaming, settled failed (MessageStore's
      # conversation and finish_assistant call settle_abandoned). Uses the store's
      # with_connection, proxy, messages, read and @columns.
      module Abandoned
        # Settles failed the assistant rows a dead process left "streaming" (partial
        # text kept, failure_reason when the table has it): those a later complete
        # answer of their turn follows, or unwritten for longer than a call can last.
        # A database failure here never fails the call.
        # @return [Integer] the rows settled
        def settle_abandoned(all = nil)
          # Given the rows just read, they say whether there is any; else one query does.
          streaming = if all
                        all.any? { |m| read(m, :role) == "assistant" && read(m, :status) == "streaming" }
                      else
                        with_connection do
                          proxy.where(@columns[:status] => "streaming", @columns[:role] => "assistant").exists?
                        end
                      end
          return 0 unless streaming

          abandoned(all || messages).sum { |message, reason| settle(message, reason) }
        rescue ::ActiveRecord::ActiveRecordError => e
          Warnings.warn("could not settle abandoned assistant messages: #{e.class}: #{e.message}")
          0
        end

        # The answer rows left streaming in the turn of +key+, whose claim a call has
        # just taken from a dead one (Idempotency): no live call writes them, and the
        # new answer takes the last of them (start_assistant), one turn, one row.
        # @return [Integer] the rows settled
        def settle_turn(key)
          all = messages
          start = all.index { |m| read(m, :role) == "user" && read(m, :idempotency_key) == key }
          return 0 unless start

          all[(start + 1)..].take_while { |m| read(m, :role) != "user" }
                            .select { |m| read(m, :role) == "assistant" && read(m, :status) == "streaming" }
                            .sum { |m| settle(m, "abandoned mid-answer: the call answering it died") }
        end

        private

        # Marks one streaming row failed, with +reason+ where the table keeps one.
        def settle(message, reason)
          status = @columns[:status]
          changes = { status => "failed" }
          changes["failure_reason"] = reason if message.has_attribute?("failure_reason")
          with_connection { proxy.where(id: message.id, status => "streaming").update_all(changes) }.tap do |n|
            message.assign_attributes(changes) if n == 1
          end
        end

        # [row, reason] of each streaming assistant row that no live call can own.
        def abandoned(all)
          stale_before = Time.current - longest_call
          turn_answered = false
          found = []
          # Newest first: a complete answer makes the streaming rows of its turn before it abandoned.
          all.reverse_each do |m|
            case read(m, :role)
            when "user" then turn_answered = false
            when "assistant"
              state = read(m, :status)
              turn_answered = true if state == "complete"
              next unless state == "streaming"

              if turn_answered
                found << [m, "abandoned mid-answer: a later call answered the same turn"]
              elsif m.has_attribute?("updated_at") && m.updated_at && m.updated_at < stale_before
                found << [m, "abandoned mid-answer: nothing written for longer than a call can last (#{longest_call.round} s)"]
              end
            end
          end
          found
        end

        def longest_call
          LlmFailover.configuration.longest_call
        end
      end
    end
  end
end
