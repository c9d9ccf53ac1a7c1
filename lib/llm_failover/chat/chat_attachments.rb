# frozen_string_literal: true

require_relative "../attachments/selection"

module LlmFailover
  class Chat
    # Chat's attachments (included in Chat): the files given to #ask checked against
    # the chat's targets, and a stored message's attachments read back in canonical
    # form for the next call.
    module ChatAttachments
      # The canonical attachments of +with+ (what #ask's with: takes), checked as #ask
      # checks them (type, size, count, what the chat's targets take) without storing
      # or sending anything: a form checks the files it was given before it hands
      # them to a job, and shows the refusal to the user.
      # @return [Array<Attachment>] frozen
      # @raise [ArgumentError] naming the file and the limit or type no target takes
      def check_attachments(with)
        attachments_for(with)
      end

      private

      def attachments_for(with)
        Attachment::Selection.prepare(with, targets: engine_targets.flat_map(&:hosts), allow_private: @config.attachment_private_hosts)
      end

      # A stored message's attachments in canonical form (Attachment::Selection.stored).
      def stored_attachments(message)
        Attachment::Selection.stored(@store, message)
      end
    end
  end
end
